"""Two runs compared: matched rows, step changes, the verdict and the regression gate."""
