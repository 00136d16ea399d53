//! Links llguidance's C API (the `llg_*` functions of llguidance.h) into
//! libember_llguidance.a; Ember's src/genai/constraint.cpp calls them.
pub use llguidance;
