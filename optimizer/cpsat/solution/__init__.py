"""From a plan to the model (hints) and from the model's answer back to a plan."""
