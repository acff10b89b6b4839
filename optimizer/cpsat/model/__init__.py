"""The CP-SAT model: variables, constraint families and the objective's stages."""
