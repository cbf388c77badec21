"""rich renderables for the tool's results. Used by commands and the shell only."""
