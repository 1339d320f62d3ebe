//! The `ctxlab` command line: a thin layer over the library.

fn main() {
    println!("ctxlab");
}
