//! Strategy plugin modelling fim-one (see ../shared/seeds).
