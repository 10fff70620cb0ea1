"""What a revisit works on, as the store reads and writes it: a resource due for a check with its schedule
state, and what the check found. The revisit use case is ``geoweb.harvest.revisit``."""
