//! One error type for the engine: every message names the file (and line) it is about.

use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bad content at a known place in a file.
    #[error("{}:{line}: {}", shown(.file), shown(.msg))]
    Parse {
        file: String,
        line: usize,
        msg: String,
    },
    /// A problem with a whole file.
    #[error("{}: {}", shown(.file), shown(.msg))]
    File { file: String, msg: String },
    #[error("{}: {source}", shown(.path))]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A request that cannot be carried out (bad option, unsupported model shape, ...).
    #[error("{}", shown(.0))]
    Invalid(String),
    #[error("cancelled")]
    Cancelled,
}

pub type Result<T> = std::result::Result<T, Error>;

/// The longest piece of a message shown whole: a message quotes what it is about (a token, a
/// line, a path), and a 100 MB token must not become a 100 MB line on stderr.
pub const MAX_SHOWN: usize = 600;

/// `text`, or its start and end around "…" when it is longer than [`MAX_SHOWN`] bytes (cut at
/// character boundaries), so the message's own words after the quote still show.
pub fn shown(text: &str) -> std::borrow::Cow<'_, str> {
    if text.len() <= MAX_SHOWN {
        return text.into();
    }
    let head = text.floor_char_boundary(MAX_SHOWN * 2 / 3);
    let tail = text.ceil_char_boundary(text.len() - MAX_SHOWN / 3);
    format!(
        "{} … [{} bytes] … {}",
        &text[..head],
        tail - head,
        &text[tail..]
    )
    .into()
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_huge_quote_is_cut_and_the_words_after_it_stay() {
        let token = "é".repeat(1 << 20);
        let e = Error::parse("f.conll", 3, format!("unknown label '{token}' in column 2"));
        let text = e.to_string();
        assert!(text.len() < 2 * MAX_SHOWN, "{} bytes", text.len());
        assert!(text.starts_with("f.conll:3: unknown label 'éé"), "{text}");
        assert!(
            text.ends_with("' in column 2") && text.contains(" bytes] … "),
            "{text}"
        );
        let short = Error::invalid("--threads 9: at most 8");
        assert_eq!(short.to_string(), "--threads 9: at most 8");
    }
}
