"""The command line: the kit's options, the subcommands' argument parser, ``clauses``, how ``certify`` calls
pytest, and the exit codes."""
