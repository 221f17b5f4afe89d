"""One module per measured path: its axes and its body; the harness times them."""
