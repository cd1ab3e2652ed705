"""Layer 0: errors, configuration and the small protocols every other layer shares.

Import order of the layers: ``core`` -> ``io`` and ``encoding`` -> ``file`` -> ``table`` -> API, ``spark``, CLI.
``lancejit.pb`` (generated protobuf modules) sits beside ``core`` at layer 0.
"""
