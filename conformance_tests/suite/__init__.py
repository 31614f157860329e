"""The push_cache conformance suite: one module per clause family, generated from the spec.

Run it through the certify command (``python -m conformance_tests certify``), which loads the plugin.
"""
