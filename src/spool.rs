//! Spool (placeholder).
