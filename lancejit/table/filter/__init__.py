"""SQL filters: parsing (bounded), compiling to expressions, evaluation by Arrow and by kernels, the
reference's float order.
"""
