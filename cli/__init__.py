"""capgate's command-line interface (Typer): a thin skin over the registry's services."""
