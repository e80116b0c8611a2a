"""The dashboard served for tests, its log directory, fake jobs and the browser."""
