"""ember.recipes: training recipes run by the ``ember`` CLI."""
