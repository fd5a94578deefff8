//! One error type for the engine: every message names the file (and line) it is about.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad content at a known place in a file.
    #[error("{file}:{line}: {msg}")]
    Parse {
        file: String,
        line: usize,
        msg: String,
    },
    /// A problem with a whole file.
    #[error("{file}: {msg}")]
    File { file: String, msg: String },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A request that cannot be carried out (bad option, unsupported model shape, ...).
    #[error("{0}")]
    Invalid(String),
    #[error("cancelled")]
    Cancelled,
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn parse(file: impl Into<String>, line: usize, msg: impl Into<String>) -> Self {
        Error::Parse {
            file: file.into(),
            line,
            msg: msg.into(),
        }
    }
    pub fn file(file: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::File {
            file: file.into(),
            msg: msg.into(),
        }
    }
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Error::Io {
            path: path.display().to_string(),
            source,
        }
    }
    pub fn invalid(msg: impl Into<String>) -> Self {
        Error::Invalid(msg.into())
    }
}
