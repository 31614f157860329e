"""The inputs of the calls the kit makes: the case value language resolved, layouts drawn from the spec's domains,
the special bit patterns of each DataType, and invalid inputs broken by one restriction."""
