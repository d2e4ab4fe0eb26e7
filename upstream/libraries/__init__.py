"""pytest plugins of single third-party libraries (revisions.toml `plugin`), beside upstream/library_plugin.py:
each adapts what is that library's alone, as data where it can."""
