"""Reference implementations: slow and plain, the oracles the fast code is checked against."""
