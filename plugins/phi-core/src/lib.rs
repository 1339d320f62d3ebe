//! Strategy plugin modelling phi-core (see ../shared/seeds).
