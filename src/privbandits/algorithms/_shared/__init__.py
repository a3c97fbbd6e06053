"""Internal math shared by the algorithm families: designs, linear algebra, GLM estimation, generated round loops.

Nothing here is an algorithm or part of the public contract; import from the submodules.
"""
