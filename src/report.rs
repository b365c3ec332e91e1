//! Report (placeholder).
