//! Strategy plugin modelling fuseraft (see ../shared/seeds).
