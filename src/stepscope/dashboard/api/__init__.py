"""The HTTP side: routes, their answers and access checks, the lookups a request makes, and the views computed per request (diff, distributed)."""
