pub const ADAPTERS: &[(&str, &[u8])] = &[];
