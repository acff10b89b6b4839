"""The greedy engine: one faithful Volcano scheduling cycle on the snapshot."""
