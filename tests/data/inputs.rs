//! Inputs as the field passes them: `-` for standard input, gzip files (by content, whatever
//! their name) — the same corpus as the plain file, and the same trained weights.

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_piecewise-lab"))
}

fn sample() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("sample_data/hmm-a0.5-train.conll")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(vec![], flate2::Compression::default());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

#[test]
fn gzip_and_standard_input_read_as_the_plain_file() {
    use piecewise_lab::data::read_corpus;
    let tmp = tempfile::tempdir().unwrap();
    let plain = std::fs::read(sample()).unwrap();
    let want = read_corpus(&sample()).unwrap();
    for name in ["train.conll.gz", "train.conll"] {
        let p = tmp.path().join(name);
        std::fs::write(&p, gzip(&plain)).unwrap();
        let got = read_corpus(&p).unwrap();
        assert_eq!(got.sequences.len(), want.sequences.len(), "{name}");
        assert_eq!(
            format!("{:?}", got.sequences),
            format!("{:?}", want.sequences),
            "{name}"
        );
    }
    // A damaged gzip file is an error naming it.
    let bad = tmp.path().join("bad.conll.gz");
    let mut z = gzip(&plain);
    z.truncate(z.len() / 2);
    std::fs::write(&bad, z).unwrap();
    let err = read_corpus(&bad).unwrap_err().to_string();
    assert!(err.contains("bad.conll.gz"), "{err}");

    // `info -` on standard input: the same counts as on the file.
    let info = |args: &[&str], stdin: &[u8]| {
        let mut c = bin()
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        c.stdin.take().unwrap().write_all(stdin).unwrap();
        let o = c.wait_with_output().unwrap();
        assert!(o.status.success());
        String::from_utf8(o.stdout).unwrap()
    };
    let from_file = info(&["info", sample().to_str().unwrap()], b"");
    let from_stdin = info(&["info", "-"], &plain);
    let from_gz_stdin = info(&["info", "-"], &gzip(&plain));
    let counts = |s: &str| s.lines().skip(1).collect::<Vec<_>>().join("\n");
    assert_eq!(counts(&from_stdin), counts(&from_file));
    assert_eq!(counts(&from_gz_stdin), counts(&from_file));
}
