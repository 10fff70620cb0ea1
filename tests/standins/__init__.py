"""Stand-ins of the outside APIs the connectors read, on loopback, speaking each documented format."""
