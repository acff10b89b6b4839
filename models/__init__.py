"""vcopt's domain: what a Volcano cluster and its waiting work are (no solver code)."""
