"""Work away from the request: worker processes, the analysis each profile gets and its cache, jobs on a loaded profile, captures started from the page."""
