"""One module per registered tool, named as the tool (and as its docs page and web page)."""
