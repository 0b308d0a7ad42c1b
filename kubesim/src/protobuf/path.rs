//! Where in an object the codec is, rendered only when an error names it
//! (`spec.template.spec.containers[0].ports[1].containerPort`).

use std::fmt;

/// One step from the object root.
#[derive(Debug, Clone, Copy)]
pub(super) enum Step<'a> {
    /// The object itself.
    Root,
    /// A field, by JSON name.
    Field(&'a str),
    /// An element of a repeated field.
    Index(usize),
    /// An entry of a map field.
    Key(&'a str),
}

/// A path: a step and the path it extends, on the stack of the walk.
#[derive(Debug, Clone, Copy)]
pub(super) struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    step: Step<'a>,
}

impl<'a> Path<'a> {
    /// The object root.
    pub(super) const ROOT: Path<'static> = Path {
        parent: None,
        step: Step::Root,
    };

    /// This path extended by a step.
    pub(super) fn then(&'a self, step: Step<'a>) -> Path<'a> {
        Path {
            parent: Some(self),
            step,
        }
    }
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(parent) = self.parent {
            parent.fmt(f)?;
        }
        match self.step {
            Step::Root => Ok(()),
            Step::Field(name) if matches!(self.parent.map(|p| p.step), Some(Step::Root)) => {
                f.write_str(name)
            }
            Step::Field(name) => write!(f, ".{name}"),
            Step::Index(i) => write!(f, "[{i}]"),
            Step::Key(key) => write!(f, "[{key:?}]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_render_as_field_paths() {
        let spec = Path::ROOT.then(Step::Field("spec"));
        let containers = spec.then(Step::Field("containers"));
        let first = containers.then(Step::Index(0));
        let limits = first.then(Step::Field("limits"));
        let cpu = limits.then(Step::Key("cpu"));
        assert_eq!(cpu.to_string(), "spec.containers[0].limits[\"cpu\"]");
        assert_eq!(Path::ROOT.to_string(), "");
    }
}
