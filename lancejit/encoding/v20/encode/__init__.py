"""2.0 encoders: one column per field (pre-order); ``ArrayEncoding`` pages of Flat / Nullable /
Binary / Dictionary / FixedSizeList / List / SimpleStruct, as pylance 14 writes them."""
