// Filled in by the tokens/bench work (issue 2); a placeholder keeps the [[bench]] target valid.
fn main() {}
