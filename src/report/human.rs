//! Human text: each report lays itself out ([`super::Render::human`]),
//! with tables through [`super::text`].

/// `--format human`, the default.
pub const FORMAT: super::FormatSpec = super::FormatSpec {
    name: "human",
    help: "Text for people (the default)",
    needs: super::Form::Text,
    render: |r, style, out| Ok(r.forms().human(out, style)?),
};
