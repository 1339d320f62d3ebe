//! Strategy plugin modelling codetether (see ../shared/seeds).
