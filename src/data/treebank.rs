//! Penn Treebank trees (001 §5's data): the bracketed `.mrg` reader — a file, a directory of
//! them, or a zip archive such as `ptb-wsj-sample/treebank.zip` — and the transforms a parser
//! applies before reading a grammar off the trees: drop `-NONE-` and what it empties, strip
//! function tags, collapse unary chains, binarise with horizontal Markov order h (parent
//! annotation optional). Every transform after the first two is undone by [`debinarise`].

use crate::error::{Error, Result};
use std::io::Read;
use std::path::Path;

/// A node: a label and its children; a leaf (a word) has none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub label: String,
    pub children: Vec<Tree>,
}

/// The label of the root added by [`normalise`] where the file's outer bracket has none.
pub const ROOT: &str = "TOP";
/// Marks a node made by binarisation (`@X|<…>`), spliced back by [`debinarise`].
const BIN: char = '@';
/// Joins the labels of a collapsed unary chain (`S+VP`).
const UNARY: char = '+';
/// Separates a label from its parent's (`NP^S`).
const PARENT: char = '^';

impl Tree {
    pub fn leaf(word: &str) -> Tree {
        Tree {
            label: word.to_string(),
            children: Vec::new(),
        }
    }
    pub fn is_leaf(&self) -> bool {
        self.children.is_empty()
    }
    /// A part-of-speech node: one child, a word.
    pub fn is_preterminal(&self) -> bool {
        self.children.len() == 1 && self.children[0].is_leaf()
    }
    /// (tag, word) of every preterminal, left to right.
    pub fn tagged_words(&self) -> Vec<(&str, &str)> {
        let mut out = Vec::new();
        fn walk<'a>(t: &'a Tree, out: &mut Vec<(&'a str, &'a str)>) {
            if t.is_preterminal() {
                out.push((t.label.as_str(), t.children[0].label.as_str()));
            } else {
                t.children.iter().for_each(|c| walk(c, out));
            }
        }
        walk(self, &mut out);
        out
    }
    pub fn words(&self) -> Vec<&str> {
        self.tagged_words().into_iter().map(|(_, w)| w).collect()
    }
}

/// The bracketed form, on one line: `(S (NP (DT the) (NN cat)) (VP (VBD sat)))`.
impl std::fmt::Display for Tree {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_leaf() {
            return write!(f, "{}", self.label);
        }
        write!(f, "({}", self.label)?;
        for c in &self.children {
            write!(f, " {c}")?;
        }
        write!(f, ")")
    }
}

/// The deepest bracket nesting a tree may have (its outer bracket is level 1, a
/// part-of-speech bracket one more than its parent). Penn Treebank trees are under 40 deep.
/// Trees are walked recursively (normalising, binarising, scoring, printing, dropping), at
/// up to about 1 KB of stack per level in the test profile: the bound keeps a tree at both
/// bounds within a quarter of the 2 MB stack of rayon's workers and of test threads
/// (`tests/data/tree_limits.rs` walks one on a 512 KB thread).
pub const MAX_TREE_DEPTH: usize = 500;
/// The most words (leaves, `-NONE-` elements included) a tree may have, which bounds the
/// children of a node too: binarisation turns a node with n children into a chain n deep, so
/// a binarised tree is up to `MAX_TREE_DEPTH + MAX_TREE_WORDS` deep. WSJ sentences have under
/// 150 words; EVALB takes 200 (`MAX_WORD_IN_SENT` in evalb.c).
pub const MAX_TREE_WORDS: usize = 2_000;

/// Reads every tree of a bracketed text (`file` names it in errors). A tree is `(label child…)`;
/// the outer bracket of a `.mrg` tree has no label. Unbalanced brackets, empty trees, text
/// outside a tree, a word beside other children, and a tree deeper than [`MAX_TREE_DEPTH`] or
/// with more than [`MAX_TREE_WORDS`] words are errors at their line.
pub fn parse_trees(text: &str, file: &str) -> Result<Vec<Tree>> {
    Ok(parse_trees_at(text, file)?
        .into_iter()
        .map(|(_, t)| t)
        .collect())
}

/// As [`parse_trees`], with the line of each tree's opening bracket.
pub fn parse_trees_at(text: &str, file: &str) -> Result<Vec<(usize, Tree)>> {
    let mut trees = Vec::new();
    // Open nodes: (label, children, line of the bracket); a label is the first atom after '('.
    // The bounds are checked as the text is read, so nothing deeper than MAX_TREE_DEPTH is
    // ever built, and what was built drops without deep recursion.
    let mut stack: Vec<(Option<String>, Vec<Tree>, usize)> = Vec::new();
    // Words of the tree being read.
    let mut words = 0usize;
    for (ln, line) in text.lines().enumerate() {
        let ln = ln + 1;
        let mut rest = line;
        loop {
            rest = rest.trim_start();
            let Some(c) = rest.chars().next() else { break };
            match c {
                '(' => {
                    if stack.len() >= MAX_TREE_DEPTH {
                        let open = stack[0].2;
                        return Err(Error::parse(
                            file,
                            ln,
                            format!(
                                "the tree opened at line {open} is deeper than {MAX_TREE_DEPTH} \
                                 brackets (MAX_TREE_DEPTH)"
                            ),
                        ));
                    }
                    if stack.is_empty() {
                        words = 0;
                    }
                    stack.push((None, Vec::new(), ln));
                    rest = &rest[1..];
                }
                ')' => {
                    let Some((label, children, open)) = stack.pop() else {
                        return Err(Error::parse(file, ln, "')' without a matching '('"));
                    };
                    rest = &rest[1..];
                    let label = label.unwrap_or_default();
                    if children.is_empty() {
                        let what = if label.is_empty() {
                            "an empty tree '()'".to_string()
                        } else {
                            format!("'({label})' has no children")
                        };
                        return Err(Error::parse(file, open, what));
                    }
                    if children.len() > 1 && children.iter().any(Tree::is_leaf) {
                        return Err(Error::parse(
                            file,
                            open,
                            format!("'({label} …)' has a word beside other children"),
                        ));
                    }
                    let node = Tree { label, children };
                    match stack.last_mut() {
                        Some(parent) => parent.1.push(node),
                        None => trees.push((open, node)),
                    }
                }
                _ => {
                    let end = rest
                        .find(|ch: char| ch.is_whitespace() || ch == '(' || ch == ')')
                        .unwrap_or(rest.len());
                    let atom = &rest[..end];
                    rest = &rest[end..];
                    match stack.last_mut() {
                        None => {
                            return Err(Error::parse(
                                file,
                                ln,
                                format!("text outside a tree: '{atom}'"),
                            ))
                        }
                        Some((label @ None, children, _)) if children.is_empty() => {
                            *label = Some(atom.to_string())
                        }
                        Some((label, children, _)) => {
                            if label.as_deref().is_none_or(str::is_empty) {
                                return Err(Error::parse(
                                    file,
                                    ln,
                                    format!("the word '{atom}' has no part-of-speech bracket"),
                                ));
                            }
                            words += 1;
                            if words > MAX_TREE_WORDS {
                                let open = stack[0].2;
                                return Err(Error::parse(
                                    file,
                                    ln,
                                    format!(
                                        "the tree opened at line {open} has more than \
                                         {MAX_TREE_WORDS} words (MAX_TREE_WORDS)"
                                    ),
                                ));
                            }
                            children.push(Tree::leaf(atom));
                        }
                    }
                }
            }
        }
    }
    if let Some((_, _, open)) = stack.last() {
        return Err(Error::parse(file, *open, "'(' is never closed"));
    }
    Ok(trees)
}

/// Whether a tree keeps a word once [`normalise`] removes `-NONE-` elements (and what they
/// empty): a tree that does not is left as a bare root label, which no consumer can use.
pub fn has_words(t: &Tree) -> bool {
    fn keeps(t: &Tree) -> bool {
        t.children
            .iter()
            .any(|c| c.is_leaf() || (c.label != "-NONE-" && keeps(c)))
    }
    t.is_leaf() || keeps(t)
}

/// The trees of one `.mrg` file.
#[derive(Clone, Debug)]
pub struct TreeFile {
    /// The file's name without folders, e.g. `wsj_0001.mrg`.
    pub name: String,
    pub trees: Vec<Tree>,
}

impl TreeFile {
    /// The number in a WSJ file name (`wsj_0123.mrg` → 123), for splits by file.
    pub fn number(&self) -> Option<u32> {
        let stem = self.name.strip_suffix(".mrg")?;
        stem.rsplit('_').next()?.parse().ok()
    }
}

/// Reads `.mrg` trees from a file, a directory (its `.mrg` files, not recursively) or a zip
/// archive (its `.mrg` entries), files in name order.
pub fn read_treebank(path: &Path) -> Result<Vec<TreeFile>> {
    let shown = path.display().to_string();
    let mut files = Vec::new();
    if path.is_dir() {
        let entries = std::fs::read_dir(path).map_err(|e| Error::io(path, e))?;
        for e in entries {
            let p = e.map_err(|e| Error::io(path, e))?.path();
            if p.extension().is_some_and(|x| x == "mrg") {
                let text = crate::util::read_text(&p)?;
                files.push(named(&p.display().to_string(), &text)?);
            }
        }
    } else {
        let bytes = crate::util::read_bytes(path)?;
        files = parse_treebank_bytes(&bytes, &shown)?;
    }
    if files.is_empty() {
        return Err(Error::file(shown, "no .mrg trees here"));
    }
    files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(files)
}

/// The trees of one file's bytes: a zip archive's `.mrg` entries, or one `.mrg` text.
pub fn parse_treebank_bytes(bytes: &[u8], shown: &str) -> Result<Vec<TreeFile>> {
    if !bytes.starts_with(b"PK\x03\x04") {
        let text = std::str::from_utf8(bytes).map_err(|_| Error::file(shown, "not UTF-8"))?;
        return Ok(vec![named(shown, text)?]);
    }
    let mut files = Vec::new();
    for (name, data) in zip_entries(bytes, shown)? {
        if name.ends_with(".mrg") {
            let text = String::from_utf8(data)
                .map_err(|_| Error::file(format!("{shown}:{name}"), "not UTF-8 text"))?;
            files.push(named(&format!("{shown}:{name}"), &text)?);
        }
    }
    Ok(files)
}

/// A treebank file's trees. A tree with no words once `-NONE-` is removed is an error at its
/// line: every reader of a treebank (training, the split, reproductions, the Parse pane)
/// normalises its trees, and one left empty has no sentence to train on, parse or score.
fn named(shown: &str, text: &str) -> Result<TreeFile> {
    let name = shown.rsplit(['/', ':']).next().unwrap_or(shown).to_string();
    let mut trees = Vec::new();
    for (line, t) in parse_trees_at(text, shown)? {
        if !has_words(&t) {
            return Err(Error::parse(
                shown,
                line,
                "the tree has no words once its -NONE- elements are removed",
            ));
        }
        trees.push(t);
    }
    Ok(TreeFile { name, trees })
}

/// (name, contents) of every file in a zip archive: stored or deflated entries, CRC-checked,
/// read through the central directory.
fn zip_entries(bytes: &[u8], shown: &str) -> Result<Vec<(String, Vec<u8>)>> {
    let bad = |m: &str| Error::file(shown, format!("damaged zip archive: {m}"));
    let u16_at = |i: usize| -> Result<usize> {
        bytes
            .get(i..i + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]) as usize)
            .ok_or_else(|| bad("truncated"))
    };
    let u32_at = |i: usize| -> Result<usize> {
        bytes
            .get(i..i + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(|| bad("truncated"))
    };
    // The end-of-central-directory record: the last signature within 64 KiB of the end.
    let lo = bytes.len().saturating_sub(22 + 65_535);
    let eocd = (lo..bytes.len().saturating_sub(21))
        .rev()
        .find(|&i| bytes[i..i + 4] == [0x50, 0x4b, 0x05, 0x06])
        .ok_or_else(|| bad("no end-of-central-directory record"))?;
    let count = u16_at(eocd + 10)?;
    let mut at = u32_at(eocd + 16)?;
    let mut out = Vec::with_capacity(count);
    let mut total = 0u64;
    for _ in 0..count {
        if u32_at(at)? != 0x0201_4b50 {
            return Err(bad("bad central-directory entry"));
        }
        let method = u16_at(at + 10)?;
        let crc = u32_at(at + 16)? as u32;
        let (csize, usize_) = (u32_at(at + 20)?, u32_at(at + 24)?);
        let (nlen, xlen, clen) = (u16_at(at + 28)?, u16_at(at + 30)?, u16_at(at + 32)?);
        let local = u32_at(at + 42)?;
        let name = bytes
            .get(at + 46..at + 46 + nlen)
            .ok_or_else(|| bad("truncated name"))?;
        let name = String::from_utf8_lossy(name).into_owned();
        at += 46 + nlen + xlen + clen;
        if name.ends_with('/') {
            continue;
        }
        if u32_at(local)? != 0x0403_4b50 {
            return Err(bad(&format!("{name}: bad local header")));
        }
        let start = local + 30 + u16_at(local + 26)? + u16_at(local + 28)?;
        let data = bytes
            .get(start..start + csize)
            .ok_or_else(|| bad(&format!("{name}: truncated data")))?;
        let data = match method {
            0 => data.to_vec(),
            8 => {
                // A header's size is only a claim (a zip bomb inflates far past it): no more
                // than it says is inflated, and all entries together stay within the input limit.
                total += usize_ as u64;
                if total > crate::util::MAX_INPUT_BYTES {
                    return Err(bad(&format!(
                        "{name}: the entries inflate to more than {} bytes, the most an input may hold",
                        crate::util::MAX_INPUT_BYTES
                    )));
                }
                let mut v = Vec::with_capacity(usize_.min(1 << 26));
                flate2::read::DeflateDecoder::new(data)
                    .take(usize_ as u64 + 1)
                    .read_to_end(&mut v)
                    .map_err(|e| bad(&format!("{name}: {e}")))?;
                v
            }
            m => {
                return Err(Error::file(
                    shown,
                    format!("{name}: compression method {m} is not supported (stored or deflate)"),
                ))
            }
        };
        let mut h = flate2::Crc::new();
        h.update(&data);
        if h.sum() != crc || data.len() != usize_ {
            return Err(bad(&format!("{name}: CRC or size mismatch")));
        }
        out.push((name, data));
    }
    Ok(out)
}

/// The standard clean-up (as EVALB's inputs and parsers' training trees have it): the root gets
/// the label [`ROOT`]; `-NONE-` elements and the constituents left empty by removing them are
/// dropped; function tags and indices are stripped (`NP-SBJ-1` → `NP`, `NP=2` → `NP`; labels
/// that start with `-`, such as `-LRB-`, are kept). Part-of-speech tags are left alone. A tree
/// whose every word is under `-NONE-` is left as its bare root ([`has_words`] tells; the
/// treebank reader refuses one at its line).
pub fn normalise(tree: &mut Tree) {
    if tree.label.is_empty() {
        tree.label = ROOT.to_string();
    }
    strip_none(tree);
    strip_function_tags(tree);
}

fn strip_none(t: &mut Tree) {
    t.children.retain_mut(|c| {
        if c.is_leaf() {
            return true;
        }
        if c.label == "-NONE-" {
            return false;
        }
        strip_none(c);
        !c.children.is_empty()
    });
}

fn strip_function_tags(t: &mut Tree) {
    if t.is_leaf() || t.is_preterminal() {
        return;
    }
    if !t.label.starts_with('-') {
        let end = t.label.find(['-', '=']).unwrap_or(t.label.len());
        t.label.truncate(end.max(1));
    }
    t.children.iter_mut().for_each(strip_function_tags);
}

/// The first label (a node's, not a word's) that uses a character binarisation reserves
/// (`@`, `+`, `^`): such a tree would not come back from [`debinarise`] as it was.
pub fn reserved_label(t: &Tree) -> Option<&str> {
    if t.is_leaf() {
        return None;
    }
    if t.label.contains([BIN, UNARY, PARENT]) {
        return Some(&t.label);
    }
    t.children.iter().find_map(reserved_label)
}

/// How [`binarise`] factors long rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Binarisation {
    /// Horizontal Markov order: how many already-generated siblings an intermediate symbol
    /// remembers.
    pub horizontal: usize,
    /// Annotate each phrasal label with its parent's (`NP^S`).
    pub parent: bool,
}

impl Default for Binarisation {
    fn default() -> Self {
        Binarisation {
            horizontal: 2,
            parent: false,
        }
    }
}

/// Collapses unary chains, annotates parents (if asked) and binarises, so that every node has
/// one word or two children: Chomsky normal form, read off by [`debinarise`] exactly.
/// - A unary chain `A → B → …` becomes one node `A+B+…` with the last node's children (over a
///   part-of-speech node, the result is a part-of-speech node `A+…+TAG`).
/// - `X → c1 c2 … cn` (n > 2) becomes `X → c1 @X|<c1> `, `@X|<c1> → c2 @X|<c1,c2>`, …, each
///   intermediate remembering the last `horizontal` siblings generated.
pub fn binarise(tree: &Tree, how: Binarisation) -> Tree {
    let collapsed = collapse_unaries(tree);
    let annotated = if how.parent {
        annotate(&collapsed, None)
    } else {
        collapsed
    };
    factor(&annotated, how.horizontal)
}

fn collapse_unaries(t: &Tree) -> Tree {
    if t.is_leaf() || t.is_preterminal() {
        return t.clone();
    }
    if t.children.len() == 1 {
        let inner = collapse_unaries(&t.children[0]);
        return Tree {
            label: format!("{}{UNARY}{}", t.label, inner.label),
            children: inner.children,
        };
    }
    Tree {
        label: t.label.clone(),
        children: t.children.iter().map(collapse_unaries).collect(),
    }
}

fn annotate(t: &Tree, parent: Option<&str>) -> Tree {
    if t.is_leaf() || t.is_preterminal() {
        return t.clone();
    }
    let label = match parent {
        Some(p) => format!("{}{PARENT}{p}", t.label),
        None => t.label.clone(),
    };
    // The parent a child sees is this node's own label, without its annotation.
    let own = t.label.rsplit(UNARY).next().unwrap_or(&t.label);
    Tree {
        label,
        children: t.children.iter().map(|c| annotate(c, Some(own))).collect(),
    }
}

fn factor(t: &Tree, h: usize) -> Tree {
    if t.is_leaf() || t.is_preterminal() {
        return t.clone();
    }
    let kids: Vec<Tree> = t.children.iter().map(|c| factor(c, h)).collect();
    if kids.len() <= 2 {
        return Tree {
            label: t.label.clone(),
            children: kids,
        };
    }
    // The category being expanded: the bottom of a collapsed chain, without its annotation.
    let base = t.label.rsplit(UNARY).next().unwrap_or(&t.label);
    let base = base.split(PARENT).next().unwrap_or(base);
    // Build from the right: the last two children under the deepest intermediate.
    let n = kids.len();
    let inter = |i: usize| -> String {
        // The intermediate that generates children i.. remembers children i−h..i−1.
        let from = i.saturating_sub(h);
        let seen: Vec<&str> = t.children[from..i]
            .iter()
            .map(|c| c.label.as_str())
            .collect();
        format!("{BIN}{base}|<{}>", seen.join(","))
    };
    let mut iter = kids.into_iter().rev();
    let last = iter.next().expect("n > 2");
    let before = iter.next().expect("n > 2");
    let mut right = Tree {
        label: inter(n - 2),
        children: vec![before, last],
    };
    for (k, c) in iter.enumerate() {
        let i = n - 3 - k;
        right = Tree {
            label: if i == 0 { t.label.clone() } else { inter(i) },
            children: vec![c, right],
        };
    }
    right
}

/// Undoes [`binarise`]: splices intermediate nodes into their parents, expands collapsed
/// unary chains and removes parent annotations.
pub fn debinarise(t: &Tree) -> Tree {
    if t.is_leaf() {
        return t.clone();
    }
    // An intermediate's children join its parent's; its own label is never read.
    fn splice(c: &Tree, kids: &mut Vec<Tree>) {
        if c.label.starts_with(BIN) && !c.is_leaf() {
            c.children.iter().for_each(|g| splice(g, kids));
        } else {
            kids.push(debinarise(c));
        }
    }
    let mut kids = Vec::with_capacity(t.children.len());
    t.children.iter().for_each(|c| splice(c, &mut kids));
    let plain = |l: &str| l.split(PARENT).next().unwrap_or(l).to_string();
    let parts: Vec<String> = t.label.split(UNARY).map(plain).collect();
    let mut node = Tree {
        label: parts.last().cloned().unwrap_or_default(),
        children: kids,
    };
    for l in parts.iter().rev().skip(1) {
        node = Tree {
            label: l.clone(),
            children: vec![node],
        };
    }
    node
}
