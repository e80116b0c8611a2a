"""Capturing profiles from inside the training job (see ``session``)."""
