//! Log readers: one module per format, chosen by sniffing the content.
