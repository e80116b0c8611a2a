"""What the overview concludes: findings, their rules and their predicted gains."""
