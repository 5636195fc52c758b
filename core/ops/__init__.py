"""Op families of Tensor, one file each; each file holds forwards and backwards together."""
