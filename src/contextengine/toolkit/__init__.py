"""What tools stand on, below everything that reads their results: the tool contract
(``Tool``, ``ToolOutcome``, traits, specs), masks and modes, the workspace and its
confinement, the bwrap sandbox, and the reading of command lines and error text."""
