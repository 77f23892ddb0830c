"""superb.eval"""
