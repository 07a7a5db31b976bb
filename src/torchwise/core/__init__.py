"""The shared runtime every engine builds on: errors, console output, the Task contract and its
arguments, the tune.json format. Imports nothing heavy; no module here imports torch at import
time except ``task`` (a Task holds torch objects)."""
