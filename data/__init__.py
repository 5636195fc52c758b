"""ember.data: DataPipes and the DataLoader (built in its own issue; see DESIGN.md, Data)."""
