//! Strategy plugin modelling librechat (see ../shared/seeds).
