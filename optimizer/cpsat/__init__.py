"""The CP-SAT engine: one OR-Tools model of the whole snapshot, hinted by the greedy plan."""
