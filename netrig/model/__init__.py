"""The model: lab and experiment files read (YAML with line marks) into typed models, the
safe {expr} evaluator, topology generators. Imports nothing above it."""
