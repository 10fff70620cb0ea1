"""Links: extraction from pages, normalisation, and the filter chain that decides what is followed."""
