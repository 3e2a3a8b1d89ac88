"""torch.fx.passes: the shape propagation pass (shape_prop.ShapeProp)."""
