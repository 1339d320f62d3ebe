//! Token counters and calibration against recorded usage.
