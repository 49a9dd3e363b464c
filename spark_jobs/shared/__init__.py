"""What the data layers share that is neither a pure transform nor an adapter: the serving view they publish into, locks, definition guards, timers."""
