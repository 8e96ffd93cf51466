"""The node model: Array and Group over a store, their metadata and attributes, the
creation of nodes, and each array's stored units (``units/``)."""
