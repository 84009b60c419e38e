"""Settings for the whole suite."""
import gc


def pytest_sessionfinish(session, exitstatus):
    # pytest's unraisable-exception plugin runs five full garbage collections when the
    # session ends; over this suite's heap (generated code, caches, arrays: several GB at
    # the end) they took about 3 minutes of CI. One collection here still finalizes every
    # cycle the tests left (an exception raised in a __del__ is still reported), and the
    # objects left are then frozen, so the plugin's collections pass over them.
    gc.collect()
    gc.freeze()
