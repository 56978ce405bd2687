"""A test plugin package that uses every form widget and every event kind, plus bespoke views."""
